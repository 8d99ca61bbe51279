namespace turnpike::core {}  // placeholder
