namespace turnpike::testing {}  // placeholder
