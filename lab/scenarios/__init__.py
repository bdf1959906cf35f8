"""Compliance from hall audio: scripts rendered as stereo hall recordings, the scenario benchmark, long occasions."""
