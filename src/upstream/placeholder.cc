namespace turnpike::upstream {}  // placeholder
