from django.apps import AppConfig


class HostsConfig(AppConfig):
    name = "hosts"
    verbose_name = "AHP host"

    def ready(self) -> None:
        from .edge import principal_changes

        # A revoked token or a changed role reaches the engine's kept principals.
        principal_changes.connect()
