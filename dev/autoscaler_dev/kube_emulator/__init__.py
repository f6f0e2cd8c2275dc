"""The Kubernetes API emulator: ``emulator.KubeEmulator`` serves a Kubernetes API over HTTP from memory; its
siblings hold the pieces: resource types and discovery (``resources``), the object store (``store``) with watches
(``watch``), patches, selectors, admission, evictions and server-side tables, and the aiohttp routes (``server``)."""
