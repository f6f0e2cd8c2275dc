"""The zonal-shift port: which availability zones the cluster's traffic is shifted away from (Karpenter-AWS's
``arczonalshift.Provider``, behind its ``enableZonalShift`` setting). Pure.

Zones are named by **zone ID** (``usw2-az1``), as ARC names them: zone names differ between accounts, IDs do not.
The provider maps them to the zone names of an EC2NodeClass's subnets (``status.subnets[].zoneID``), as Karpenter
maps them through the class's zone information.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class ZonalShiftReadError(Exception):
    """ARC could not be read (denied, throttled, the cluster is not a managed resource, ...). Adapters raise it
    only inside themselves: the port's callers never see it (see :meth:`ZonalShifts.shifted_away`)."""


class ZonalShifts(Protocol):
    def shifted_away(self) -> frozenset[str]:
        """The zone IDs an active, applied zonal shift or autoshift moves the cluster away from now (expired and
        not-applied shifts excluded). Never raises: when ARC cannot be read the answer is the last one read, or
        no zone at all before the first, as Karpenter answers ``IsZonalShifted`` false until its cache is
        hydrated. A read failure is logged and counted (:meth:`read_errors`), never a reason to stop launching."""
        ...

    def read_errors(self) -> int:
        """How many reads of ARC failed since the last call (for the caller's metrics); resets the count."""
        ...


@dataclass(frozen=True)
class ShiftedZones:
    """One reading of the port for a controller: the zone IDs shifted away now and the reads of ARC that failed
    since the previous reading (:meth:`ZonalShifts.read_errors`)."""

    zone_ids: frozenset[str] = frozenset()
    read_errors: int = 0

    @classmethod
    def read(cls, shifts: ZonalShifts) -> ShiftedZones:
        zone_ids = shifts.shifted_away()  # first: the refresh it may make can fail, and that failure counts
        return cls(zone_ids, shifts.read_errors())


class NoZonalShifts:
    """``enableZonalShift`` off (Karpenter's default): no zone is ever shifted away, and ARC is never called."""

    def shifted_away(self) -> frozenset[str]:
        return frozenset()

    def read_errors(self) -> int:
        return 0
