from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hosts", "0008_storedsession_annotations"),
    ]

    operations = [
        migrations.AddField(
            model_name="storedsession",
            name="enablement",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="the enablement decisions kept for its customizations, by id",
            ),
        ),
    ]
