"""`jitterscope place`: observation-based placement (seed 002, Knauerhase et al.): OBS-M observation,
the OBS-L/X/C/F policies as a user-level placement daemon, enforced through the journal."""
