"""Helpers over fogline's HTTP admin API (``/api/v1``, described by
``/api/v1/openapi.json``): streams, consumers, rules, health and metrics.

Blocking and dependency-free (``urllib``); errors are :class:`fogline.ServerError`
subclasses carrying the same codes as the native protocol::

    from fogline.admin import Admin

    admin = Admin("http://127.0.0.1:7767")
    admin.create_stream("lab", subjects=["lab/#"], storage="fsync")
    admin.create_rule({"id": "hot", "sql": "SELECT * FROM demo WHERE t > 30",
                       "actions": [{"publish": {"topic": "alerts/hot"}}]})
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional, Sequence

from .errors import FoglineError, server_error

__all__ = ["Admin"]


class Admin:
    """A client of one node's admin API at ``url`` (``http://host:port``)."""

    def __init__(self, url: str = "http://127.0.0.1:7767", timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One call: ``path`` below the node's URL (``/api/v1/streams``); ``body`` is
        sent as JSON; the answer's JSON is returned (``None`` when empty)."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                raise FoglineError(f"HTTP {e.code}: {raw[:200]!r}") from None
            raise server_error(int(err.get("code", 16)), str(err.get("message", ""))) from None
        except urllib.error.URLError as e:
            raise FoglineError(f"admin API unreachable: {e.reason}") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    # ---------------------------------------------------------------- node

    def healthz(self) -> bool:
        """Whether every component is up (``/healthz`` answers 200)."""
        try:
            self.request("GET", "/healthz")
            return True
        except FoglineError:
            return False

    def metrics(self) -> str:
        """The Prometheus metrics, as text."""
        req = urllib.request.Request(self.url + "/metrics")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return str(resp.read().decode("utf-8"))

    def node(self) -> Dict[str, Any]:
        return self.request("GET", "/api/v1/node")  # type: ignore[no-any-return]

    # ---------------------------------------------------------------- streams

    def streams(self) -> List[Dict[str, Any]]:
        return self.request("GET", "/api/v1/streams")  # type: ignore[no-any-return]

    def stream(self, name: str) -> Dict[str, Any]:
        return self.request("GET", f"/api/v1/streams/{_q(name)}")  # type: ignore[no-any-return]

    def create_stream(
        self,
        name: str = "",
        subjects: Sequence[str] = (),
        *,
        sql: Optional[str] = None,
        storage: Optional[str] = None,
        retention_bytes: Optional[int] = None,
        retention_age_seconds: Optional[float] = None,
        segment_bytes: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Creates a stream (or, with ``sql``, a ``CREATE STREAM`` statement's)."""
        body: Dict[str, Any] = {}
        if name:
            body["name"] = name
        if subjects:
            body["subjects"] = list(subjects)
        for key, value in (
            ("sql", sql),
            ("storage", storage),
            ("retention_bytes", retention_bytes),
            ("retention_age_seconds", retention_age_seconds),
            ("segment_bytes", segment_bytes),
        ):
            if value is not None:
                body[key] = value
        return self.request("POST", "/api/v1/streams", body)  # type: ignore[no-any-return]

    def update_stream(self, name: str, **changes: Any) -> Dict[str, Any]:
        """Changes ``subjects``, ``retention_bytes`` or ``retention_age_seconds``."""
        return self.request("PATCH", f"/api/v1/streams/{_q(name)}", changes)  # type: ignore[no-any-return]

    def purge_stream(self, name: str) -> Dict[str, Any]:
        return self.request("POST", f"/api/v1/streams/{_q(name)}/purge")  # type: ignore[no-any-return]

    def delete_stream(self, name: str) -> None:
        self.request("DELETE", f"/api/v1/streams/{_q(name)}")

    # ---------------------------------------------------------------- consumers

    def consumers(self, stream: Optional[str] = None) -> List[Dict[str, Any]]:
        path = "/api/v1/consumers" if stream is None else f"/api/v1/streams/{_q(stream)}/consumers"
        return self.request("GET", path)  # type: ignore[no-any-return]

    def consumer(self, stream: str, name: str) -> Dict[str, Any]:
        return self.request("GET", f"/api/v1/streams/{_q(stream)}/consumers/{_q(name)}")  # type: ignore[no-any-return]

    def delete_consumer(self, stream: str, name: str) -> None:
        self.request("DELETE", f"/api/v1/streams/{_q(stream)}/consumers/{_q(name)}")

    # ---------------------------------------------------------------- rules

    def rules(self) -> List[Dict[str, Any]]:
        return self.request("GET", "/api/v1/rules")  # type: ignore[no-any-return]

    def rule(self, rule_id: str) -> Dict[str, Any]:
        return self.request("GET", f"/api/v1/rules/{_q(rule_id)}")  # type: ignore[no-any-return]

    def create_rule(self, rule: Dict[str, Any]) -> Any:
        """Creates a rule: eKuiper's JSON (``id``, ``sql``, ``actions``, ``options``)."""
        return self.request("POST", "/api/v1/rules", rule)

    def rule_status(self, rule_id: str) -> Dict[str, Any]:
        return self.request("GET", f"/api/v1/rules/{_q(rule_id)}/status")  # type: ignore[no-any-return]

    def start_rule(self, rule_id: str) -> Any:
        return self.request("POST", f"/api/v1/rules/{_q(rule_id)}/start")

    def stop_rule(self, rule_id: str) -> Any:
        return self.request("POST", f"/api/v1/rules/{_q(rule_id)}/stop")

    def delete_rule(self, rule_id: str) -> None:
        self.request("DELETE", f"/api/v1/rules/{_q(rule_id)}")


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")
