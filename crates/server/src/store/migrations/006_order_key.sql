-- Orders get a unique key (contact, order_id, product_id), so storing one is
-- a single upsert (issue 15). The writes always kept that key unique (a
-- repeated order updated the stored one); any duplicate a database might hold
-- anyway keeps its first row, the one the lists show first.
DELETE FROM orders WHERE id NOT IN (
    SELECT MIN(id) FROM orders GROUP BY contact_id, order_id, product_id
);
CREATE UNIQUE INDEX orders_key ON orders(contact_id, order_id, product_id);
-- The unique key starts with contact_id: it serves every lookup by contact.
DROP INDEX orders_contact;
