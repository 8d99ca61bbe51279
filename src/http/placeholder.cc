namespace turnpike::http {}  // placeholder
