"""Trainer-side client of the BioAlchemy Stream feeder (no hard dependency beyond the standard library)."""

from .client import Batch, BatchDataset, FeederClient, FeederError
from .reward import compute_score, score

__all__ = ["Batch", "BatchDataset", "FeederClient", "FeederError", "compute_score", "score"]
