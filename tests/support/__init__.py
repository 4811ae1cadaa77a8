"""What the test layers share: running the real command line (`cli`)."""
