from django.db import migrations, models

from hosts.engine.grants import BUILTIN_ROLES


def builtin_roles(apps, schema_editor):
    Role = apps.get_model("hosts", "Role")
    for name, grants in BUILTIN_ROLES.items():
        Role.objects.update_or_create(name=name, defaults={"grants": grants, "builtin": True})


class Migration(migrations.Migration):
    dependencies = [("hosts", "0004_builtin_roles")]

    operations = [
        migrations.AddField(
            model_name="storedsession",
            name="scope",
            field=models.CharField(
                blank=True,
                db_index=True,
                default="",
                help_text="team:<slug> or project:<slug> it belongs to; blank for the host's own",
                max_length=200,
            ),
        ),
        migrations.RunPython(builtin_roles, migrations.RunPython.noop),
    ]
