from zeromem.models import Memory


def test_it_migrates_and_talks_to_postgres(db):
    assert Memory.objects.count() == 0
