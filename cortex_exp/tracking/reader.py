"""What the read side asks of a store, answered from a sqlite file without MLflow's package
where `sqlite_runs.open_store` accepts the store, else by MLflow's client (created at its first
use): a run by id, an experiment's id by name, the active experiments, the FINISHED runs of a
name. So `compare` by run ids or by names never imports MLflow on such a store (docs/measured.md
"Start-up"). Every other call (`search_runs`, `download_artifacts`, ...) goes to MLflow's
client. A store failure on either path is exit 4 (`runs.guard`)."""

from __future__ import annotations

from cortex_exp.tracking import sqlite_runs, store
from cortex_exp.tracking.runs import guard

FINISHED = "attributes.status = 'FINISHED'"
NEWEST = ["attributes.start_time DESC"]


class Reader:
    """The read side of the store `uri`; `Reader.of(client)` wraps a client a caller already
    holds (MLflow's own, never the sqlite path)."""

    def __init__(self, uri: str, client=None):
        self.uri = uri
        self._client = client
        self.direct = sqlite_runs.open_store(uri) if client is None else None

    @classmethod
    def of(cls, client) -> Reader:
        return client if isinstance(client, Reader) else cls(getattr(client, "tracking_uri", ""), client)

    def client(self):
        """MLflow's client of the store, created at the first call that needs it."""
        if self._client is None:
            with guard(self.uri):
                self._client = store.client(self.uri)
        return self._client

    def get_run(self, run_id: str):
        """The run (MLflow's error when the store has none)."""
        if self.direct is not None:
            with guard(self.uri):
                found = self.direct.get_run(run_id)
            if found is not None:
                return found
        return self.client().get_run(run_id)

    def experiment_id(self, name: str) -> str | None:
        """The id of the experiment of that name, deleted or not; None if there is none."""
        if self.direct is not None:
            with guard(self.uri):
                return self.direct.experiment_id(name)
        found = self.client().get_experiment_by_name(name)
        return None if found is None else found.experiment_id

    def active_experiments(self) -> list[str]:
        """The ids of the active experiments, as `search_experiments()` lists them."""
        if self.direct is not None:
            with guard(self.uri):
                found = self.direct.active_experiments()
            if found is not None:
                return found
        return [e.experiment_id for e in self.client().search_experiments()]

    def finished_named(self, scope: list[str], name: str, limit: int) -> list:
        """The FINISHED runs named `name` in the experiments `scope`, newest first."""
        if self.direct is not None:
            with guard(self.uri):
                return self.direct.finished_named(scope, name, limit)
        where = f"attributes.run_name = '{name}' and {FINISHED}"
        return self.client().search_runs(scope, filter_string=where, max_results=limit, order_by=NEWEST)

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("uri", "direct"):  # not set yet: no client for them
            raise AttributeError(name)
        return getattr(self.client(), name)
