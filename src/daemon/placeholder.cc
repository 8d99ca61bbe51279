namespace turnpike::daemon {}  // placeholder
