-- A stream event is deleted by the transaction that publishes it, instead of being marked
-- published and deleted an hour later. Marking it moved the row (`published_at` is in both
-- partial indexes' predicates, so the update could not stay on its page): a new row version
-- and two index entries for each of a trade's four events, then the prune's delete — about a
-- fifth of the index insertions a trade made (README, Benchmarks: "Stream events deleted when
-- published"). Nothing reads a published event: a replica renders an update from the state
-- it names, and the sequence numbers travel with the updates on Redis. Every row left is
-- unpublished, so the primary key orders the publisher's claim.
DELETE FROM stream_events WHERE published_at IS NOT NULL;
DROP INDEX stream_events_unpublished;
DROP INDEX stream_events_published;
ALTER TABLE stream_events DROP COLUMN seq, DROP COLUMN published_at;
