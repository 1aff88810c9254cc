"""The audit trail in the admin: listed and filtered, never added to, changed or removed."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from .models import AuditRecord


@admin.register(AuditRecord)
class AuditRecordAdmin(admin.ModelAdmin):
    list_display = ("at", "by", "act", "target_kind", "target_id", "via", "address")
    list_filter = ("act", "via", ("at", admin.DateFieldListFilter), "by")
    search_fields = ("by", "target_id")
    date_hierarchy = "at"
    fields = ("at", "by", "act", "target_kind", "target_id", "via", "address", "detail_shown")
    readonly_fields = fields
    actions = None

    @admin.display(description="detail")
    def detail_shown(self, record: AuditRecord) -> str:
        return format_html("<pre>{}</pre>", json.dumps(record.detail, indent=2, ensure_ascii=False))

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
