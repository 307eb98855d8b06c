"""The report's words for real links: the answers of a sweep between two hosts naming the link (real_link), and the
fleet's comparison of several pairs of hosts (fleet)."""
