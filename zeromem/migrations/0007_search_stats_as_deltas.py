# BM25 counters become append-only deltas (summed by search, folded after each write): a write appends rows and
# never waits on another's, so the unique constraints give way to plain indexes (created first: search always has
# one to read through).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('zeromem', '0006_relation_unique_by_tenant'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='termstat',
            index=models.Index(fields=['tenant', 'user_id', 'term'], name='term_stat_scope'),
        ),
        migrations.AddIndex(
            model_name='usersearchstats',
            index=models.Index(fields=['tenant', 'user_id'], name='user_search_stats_scope'),
        ),
        migrations.RemoveConstraint(
            model_name='termstat',
            name='term_stat_once',
        ),
        migrations.RemoveConstraint(
            model_name='usersearchstats',
            name='user_search_stats_once',
        ),
    ]
