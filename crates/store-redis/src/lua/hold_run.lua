-- SeatArbiter::hold (hold.lua). KEYS: the event's. ARGV: as hold.lua's A.
return hold(ARGV)
