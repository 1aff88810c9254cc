from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hosts", "0011_node"),
    ]

    operations = [
        migrations.AddField(
            model_name="storedsession",
            name="node",
            field=models.CharField(
                blank=True,
                db_index=True,
                default="",
                help_text="the node that runs it now (its agent, terminals and turns)",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="node",
            name="pid_space",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
    ]
