"""The held-out policy of a run and its one wording (:class:`Scope`, :data:`SEALED_REASON`).

Which golden queries a run may score, show and quote is a policy over the labelled data's
splits, read by every layer above: the run checks, the gates, the session and the reports.
It lives here, beside the queries it judges, so that each of them can import it downward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .model import DEFAULT_HELDOUT_SPLIT

if TYPE_CHECKING:
    from .model import Query


class HeldOutSettings(Protocol):
    """What :meth:`Scope.from_settings` reads of a run's settings (``Settings`` has them)."""

    @property
    def heldout_split(self) -> str: ...
    @property
    def heldout(self) -> bool: ...
    @property
    def heldout_details(self) -> bool: ...


#: Why a gate on the sealed held-out split is skipped, and the record it leaves (:class:`Scope`).
SEALED_REASON = "held-out split is sealed; CI unseals it with --retrieval-heldout"
#: How a report that hides held-out details says how to show them.
DETAILS_HINT = "--retrieval-heldout-details shows them"


@dataclass(frozen=True, slots=True)
class Scope:
    """The held-out policy of a run, and its wording: the one home of both.

    * **Sealed** (the default): the held-out split is never scored (its queries are not
      *scorable*), and a gate or selection naming it is skipped with :data:`SEALED_REASON`.
    * **Unsealed** (``--retrieval-heldout``): it is scored, but its per-query details (ids,
      texts, rankings, worst queries) are *redacted* everywhere unless ``details``
      (``--retrieval-heldout-details``) is also set; only aggregates are shown.
    * Whatever the seal, the held-out split is never *visible*: the fixtures, the baseline's
      per-query rows and the checks that quote queries leave it out, and a selection without a
      split (``overall``) does not cover it (:meth:`Selection.matches`).
    """

    heldout: str = DEFAULT_HELDOUT_SPLIT
    unsealed: bool = False
    #: Held-out details asked for; they are shown only when the split is also unsealed.
    details: bool = False

    @classmethod
    def from_settings(cls, settings: HeldOutSettings) -> Scope:
        """The scope of a pytest run (``retrieval_heldout_split``, ``--retrieval-heldout``,
        ``--retrieval-heldout-details``)."""
        return cls(settings.heldout_split, settings.heldout, settings.heldout_details)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scope:
        """The scope an artifact's ``heldout`` block records (:meth:`to_dict`)."""
        return cls(
            str(data.get("split") or DEFAULT_HELDOUT_SPLIT),
            bool(data.get("scored")),
            bool(data.get("details")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The artifact's ``heldout`` block: the split, whether it was scored, whether its
        details were shown."""
        return {"split": self.heldout, "scored": self.unsealed, "details": self.shows_details}

    @property
    def shows_details(self) -> bool:
        """True when held-out per-query details may be shown (unsealed, with details)."""
        return self.unsealed and self.details

    def sealed(self, split: str | None) -> bool:
        """True when ``split`` (a gate's or a selection's) is the sealed held-out split."""
        return split == self.heldout and not self.unsealed

    def scorable(self, query: Query) -> bool:
        """True when the retriever runs on ``query``: every query but held-out ones, unless
        unsealed."""
        return self.unsealed or query.split != self.heldout

    def visible(self, query: Query) -> bool:
        """True when ``query`` is outside the held-out split."""
        return query.split != self.heldout

    def hides(self, split: str | None) -> bool:
        """True when the details of what belongs to ``split`` (a query's, a gate's) must not
        be shown."""
        return split == self.heldout and not self.shows_details

    def redacted(self, query: Query) -> bool:
        """True when ``query``'s details must not be shown (:meth:`hides` its split)."""
        return self.hides(query.split)

    @property
    def state(self) -> str:
        """``sealed`` or ``unsealed``."""
        return "unsealed" if self.unsealed else "sealed"

    def describe(self, shown: str) -> str:
        """``held-out split 'heldout' sealed`` (or ``scored (aggregates only)``, ``scored with
        details``), the split's name as the caller shows it (``shown``: quoted, escaped)."""
        if not self.unsealed:
            return f"held-out split {shown} sealed"
        if self.shows_details:
            return f"held-out split {shown} scored with details"
        return f"held-out split {shown} scored (aggregates only)"
