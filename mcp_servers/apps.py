from django.apps import AppConfig


class McpServersConfig(AppConfig):
    name = "mcp_servers"
    verbose_name = "MCP servers"

    def ready(self) -> None:
        from . import registry_changes

        registry_changes.connect()
