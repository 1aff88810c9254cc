"""Settings for a started server whose MCP directory the test names (mcp_engine.py): ahpd's
own, with the engine built by `build_engine` there. Set DJANGO_SETTINGS_MODULE to this module
and AHPD_TEST_MCP_SERVERS to the servers' JSON file in the server's environment."""

from ahpsite.settings import *  # noqa: F403

AHPD_ENGINE_BUILDER = "tests.support.mcp_engine.build_engine"
