namespace turnpike::proxy {}  // placeholder
