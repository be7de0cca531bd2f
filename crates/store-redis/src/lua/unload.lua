-- Forgets the event, including a load in progress (whose next step then fails).
redis.call('DEL', META, FREE, SOLD, LAYOUT, FREEZ, HOLDS, DL, TAKEN, UNREP, FIN, LOADING, CLAIM)
return 'ok'
