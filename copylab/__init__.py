"""copylab: what data movement costs in Linux network I/O."""
