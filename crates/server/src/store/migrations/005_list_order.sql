-- Receiver lists page through a group in id order: with this index a page
-- starts at its first id instead of sorting the whole group for each page.
CREATE INDEX receivers_group_order ON receivers(group_id, id);
