"""The "Auditors" group sees every session (and may read the audit admin); the
"Runners" group may start sessions from the API and the admin preview."""

from django.db import migrations

AUDITOR_PERMISSIONS = [
    ("sessions_app", "view_all_sessions"),
    ("sessions_app", "view_agentsession"),
    ("sessions_app", "view_providercall"),
    ("sessions_app", "view_toolinvocation"),
    ("sessions_app", "view_policydenial"),
    ("sessions_app", "view_citation"),
    ("sessions_app", "view_sessionpurge"),
    ("tooling", "view_catalogrevision"),
]
RUNNER_PERMISSIONS = [
    ("sessions_app", "start_session"),
    ("tooling", "view_prompttemplate"),
]


def create_groups(apps, schema_editor):
    # Permissions are normally created after migrate; the groups need them now.
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, wanted in (("Auditors", AUDITOR_PERMISSIONS), ("Runners", RUNNER_PERMISSIONS)):
        group, _ = Group.objects.get_or_create(name=name)
        for app_label, codename in wanted:
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(
        name__in=["Auditors", "Runners"]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_access_permissions"),
        ("tooling", "0006_catalog_revision_append_only"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
