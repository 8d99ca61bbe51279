namespace turnpike::config {}  // placeholder
