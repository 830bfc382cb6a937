"""Which names hold secrets: one list for the API, the pages, the CLI and the task logs."""

from __future__ import annotations

from tradewind.connections import is_sensitive, sensitive_values


def test_names_are_sensitive_as_airflow_counts_them() -> None:
    sensitive = ["DB_PASSWORD", "api_token", "Authorization", "ssh_passphrase", "keyfile_dict"]
    assert all(is_sensitive(name) for name in sensitive)
    assert not any(is_sensitive(name) for name in ["region", "host", "timeout", "account_id"])


def test_every_value_under_a_sensitive_key_at_any_depth_is_a_secret() -> None:
    extra = {
        "api_token": "t-1",
        "region": "eu",
        "auth": {"client_secret": "s-2", "client_id": "id-3", "scopes": ["read"]},
        "service_account": {"key": "k-4", "ids": [5, "six"], "enabled": True, "none": None},
        "headers": [{"Authorization": "Bearer b-7"}, {"Accept": "json"}],
    }
    assert list(sensitive_values(extra)) == ["t-1", "s-2", "k-4", "5", "six", "Bearer b-7"]
    assert list(sensitive_values({})) == []
