//! Placeholder: the RedisArbiter hold-throughput bench lands in the next commit.

fn main() {}
