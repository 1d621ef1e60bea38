"""The labelled language set (`labelled.jsonl`) and the command-side code that reads it: training the chatter head
(`manage.py train_language`) and scoring the readers (`manage.py evaluate language`)."""
