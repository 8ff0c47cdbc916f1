-- The receivers' tables without the foreign keys that every imported row
-- checked (issue 19): a first import of 200,000 rows made 1.7 million
-- `FOR KEY SHARE` checks of contacts and 1.6 million of the account, the
-- group and the attributes, the same few rows locked by every concurrent
-- batch at once, more than half of PostgreSQL's time.
--
-- What the keys did, the store now does (store/groups.rs, attributes.rs,
-- receivers/mod.rs):
-- - a write that adds to a group holds the group and its attributes
--   (`FOR KEY SHARE`, once per request); deleting either locks it first,
--   so it waits for those writes and then sees what they wrote;
-- - deleting a contact, a group's receivers or an attribute deletes what
--   hung on it (no cascade any more).
-- Kept: `receivers.contact_id` (one check per receiver: a contact deleted
-- while a batch adds it to a group fails the batch, which is run again),
-- and every key of the other tables.

ALTER TABLE contacts DROP CONSTRAINT contacts_account_id_fkey;
ALTER TABLE receivers DROP CONSTRAINT receivers_account_id_fkey;
ALTER TABLE receivers DROP CONSTRAINT receivers_group_id_fkey;
ALTER TABLE attribute_values DROP CONSTRAINT attribute_values_contact_id_fkey;
ALTER TABLE attribute_values DROP CONSTRAINT attribute_values_attribute_id_fkey;
ALTER TABLE tags DROP CONSTRAINT tags_contact_id_fkey;
ALTER TABLE orders DROP CONSTRAINT orders_contact_id_fkey;
