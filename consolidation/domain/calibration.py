"""Sentence pairs for calibrating the clustering cosine floor of an embedder (`manage.py bench calibrate`).

Same-fact pairs say one thing in two ways and should merge; related pairs share a topic but state different
facts and must not merge on similarity alone (entities and the contradiction rules handle them); unrelated
pairs share nothing. The floor sits between the related and the same-fact scores.
"""

from __future__ import annotations

SAME_FACT = [
    ("The billing-api timed out after 30 seconds during the deploy.",
     "During the deploy, billing-api requests hit the 30 s timeout."),
    ("Caroline went to an LGBTQ support group yesterday.",
     "Yesterday Caroline attended a support group for LGBTQ people."),
    ("I prefer dark mode in every editor.", "Dark mode is what I like to use in my editors."),
    ("We decided to move the nightly ETL to 2 am.", "The nightly ETL job will now run at 2 am, we agreed."),
    ("Melanie signed up for a pottery class.", "Melanie enrolled in pottery lessons."),
    ("The Redis cache ran out of memory again.", "Again the Redis cache hit its memory limit."),
    ("My daughter loves horses and rides every weekend.",
     "Every weekend my daughter goes horse riding; she adores it."),
    ("The TLS certificate for the API expires in March.", "Our API's TLS cert runs out in March."),
    ("He is allergic to peanuts.", "He has a peanut allergy."),
    ("The team switched from Jenkins to GitHub Actions.", "We moved our CI from Jenkins over to GitHub Actions."),
    ("Caroline is researching adoption agencies.", "Caroline has been looking into agencies for adopting a child."),
    ("The flight to Tokyo was delayed by three hours.", "Our Tokyo flight left three hours late."),
]
RELATED = [
    ("The billing-api timed out after 30 seconds.", "The billing-api was deployed on Tuesday."),
    ("Melanie signed up for a pottery class.", "Melanie painted a sunrise over the lake."),
    ("I prefer dark mode in every editor.", "I use VS Code for Python work."),
    ("The Redis cache ran out of memory.", "Postgres replication lag grew to five minutes."),
    ("Caroline went to an LGBTQ support group.", "Caroline gave a talk at a school about her transition."),
    ("My daughter loves horses.", "My son started playing the violin."),
    ("We decided to move the nightly ETL to 2 am.", "The ETL failed last night because of a schema change."),
    ("The flight to Tokyo was delayed.", "We booked a hotel in Kyoto for three nights."),
]
UNRELATED = [
    ("The billing-api timed out after 30 seconds.", "Melanie signed up for a pottery class."),
    ("I prefer dark mode in every editor.", "The flight to Tokyo was delayed."),
    ("He is allergic to peanuts.", "The team switched from Jenkins to GitHub Actions."),
    ("Caroline is researching adoption agencies.", "The Redis cache ran out of memory."),
    ("My daughter loves horses.", "The TLS certificate expires in March."),
    ("We decided to move the nightly ETL to 2 am.", "Caroline went to an LGBTQ support group."),
]
