namespace turnpike::router {}  // placeholder
