"""Trainer-side client of the BioAlchemy Stream feeder (no hard dependency beyond the standard library)."""

from .client import Batch, BatchDataset, FeederClient, FeederError
from .reward import canonical_outputs, compute_score, score, unverifiable

__all__ = ["Batch", "BatchDataset", "FeederClient", "FeederError", "canonical_outputs", "compute_score", "score",
           "unverifiable"]
