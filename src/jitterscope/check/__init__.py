"""A node health check: a short measurement judged against limits and a saved baseline run (`jitterscope check`)."""
