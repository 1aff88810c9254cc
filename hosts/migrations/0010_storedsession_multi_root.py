from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hosts", "0009_storedsession_enablement"),
    ]

    operations = [
        migrations.AddField(
            model_name="storedsession",
            name="multi_root",
            field=models.BooleanField(
                default=False,
                help_text="made by a window of a multi-root workspace: its folders may change",
            ),
        ),
    ]
