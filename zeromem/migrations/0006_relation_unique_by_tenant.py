"""A relation is unique per (tenant, from, to, type): every unique constraint of a tenant's rows leads with the
tenant (issue 21, item 8; a distributed PostgreSQL such as Citus requires the distribution column in it). Same
rule as before: a relation's tenant is its memories' tenant. One transaction, so no moment without the constraint;
the btree build locks the relations table (not the memories) for its duration, a second or so per million rows.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('zeromem', '0005_memory_active_indexes'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='memoryrelation',
            name='memory_relation_once',
        ),
        migrations.AddConstraint(
            model_name='memoryrelation',
            constraint=models.UniqueConstraint(fields=('tenant', 'from_memory', 'to_memory', 'relation_type'), name='memory_relation_once'),
        ),
    ]
