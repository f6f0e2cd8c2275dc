"""Who is calling: bearer tokens the embedded world issues, one per identity, as a cluster's authenticators map
credentials to users (EKS access entries, service account tokens, node credentials).

A request without a token is ``system:anonymous`` unless the authenticator is told otherwise: kubectl sends no
credentials at all to a plain-http server (client-go reads a kubeconfig's credentials only for https), so the
embedded world serves such requests as the cluster's admin, as the API server's old insecure port did, and kubectl
users ask as someone else with ``--as`` / ``--as-group``. A token nobody issued is 401 Unauthorized. Every
authenticated user is also in ``system:authenticated``, as the API server adds it. Impersonation
(``Impersonate-User`` / ``Impersonate-Group``) is resolved by the gate, which must authorize it first.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"
NODES = "system:nodes"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
NODE_PREFIX = "system:node:"
DEFAULT_TOKEN = "emulator"  # what KubeEmulator.kubeconfig() sends: the cluster's creator, an admin


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()

    @property
    def node_name(self) -> str:
        """The node a kubelet's credentials belong to ("" for anyone else)."""
        if self.name.startswith(NODE_PREFIX) and NODES in self.groups:
            return self.name[len(NODE_PREFIX) :]
        return ""


ANONYMOUS = User("system:anonymous", (UNAUTHENTICATED,))
ADMIN = User("kubernetes-admin", (MASTERS, AUTHENTICATED))


def authenticated(name: str, *groups: str) -> User:
    """A user as an authenticator returns it: its groups plus ``system:authenticated``."""
    return User(name, (*dict.fromkeys(g for g in groups if g != AUTHENTICATED), AUTHENTICATED))


def service_account(namespace: str, name: str) -> User:
    return authenticated(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}", "system:serviceaccounts", f"system:serviceaccounts:{namespace}"
    )


def node(name: str) -> User:
    return authenticated(f"{NODE_PREFIX}{name}", NODES)


class UnauthorizedError(Exception):
    """A credential nobody issued (the API server answers 401)."""


class Authenticator:
    """Bearer token -> user. ``issue`` gives an identity its token (the same token every time)."""

    def __init__(self, unauthenticated: User = ANONYMOUS) -> None:
        self.unauthenticated = unauthenticated
        self._users: dict[str, User] = {DEFAULT_TOKEN: ADMIN}
        self._lock = threading.Lock()

    def issue(self, user: User) -> str:
        token = hashlib.sha256(f"{user.name}|{','.join(user.groups)}".encode()).hexdigest()[:40]
        with self._lock:
            self._users[token] = user
        return token

    def authenticate(self, authorization: str | None) -> User:
        """The user behind an ``Authorization`` header (``unauthenticated`` without one)."""
        if not authorization:
            return self.unauthenticated
        scheme, _, token = authorization.partition(" ")
        user = self._users.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise UnauthorizedError("Unauthorized")
        return user
