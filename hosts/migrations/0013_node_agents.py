from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hosts", "0012_session_nodes"),
    ]

    operations = [
        migrations.AddField(
            model_name="node",
            name="agents",
            field=models.JSONField(default=list),
        ),
    ]
