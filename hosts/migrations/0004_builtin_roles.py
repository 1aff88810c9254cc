from django.db import migrations

from hosts.engine.grants import BUILTIN_ROLES


def create_builtin_roles(apps, schema_editor):
    Role = apps.get_model("hosts", "Role")
    for name, grants in BUILTIN_ROLES.items():
        Role.objects.update_or_create(name=name, defaults={"grants": grants, "builtin": True})


class Migration(migrations.Migration):
    dependencies = [("hosts", "0003_role_team_storedsession_owner_project_membership_and_more")]

    operations = [migrations.RunPython(create_builtin_roles, migrations.RunPython.noop)]
