"""`jitterscope place`: observation-based placement (Knauerhase et al. 2008): OBS-M observation,
the OBS-L/X/C/F policies as a user-level placement daemon, enforced through the journal."""
