from django.contrib import admin

from .models import RootConfig


@admin.register(RootConfig)
class RootConfigAdmin(admin.ModelAdmin):
    list_display = ("key", "updated_at")
    readonly_fields = ("updated_at",)
