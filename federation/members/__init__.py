"""members."""
