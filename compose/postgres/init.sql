-- Demo database for the Debezium PostgreSQL connector: a role with REPLICATION that
-- owns the captured table (a filtered publication needs that), and the table with
-- REPLICA IDENTITY FULL so update and delete events carry the whole previous row.
CREATE ROLE debezium WITH LOGIN REPLICATION PASSWORD 'dbz-secret';
CREATE DATABASE shop OWNER debezium;
\connect shop debezium
CREATE TABLE customers (id integer PRIMARY KEY, email text NOT NULL, balance numeric(10, 2));
ALTER TABLE customers REPLICA IDENTITY FULL;
INSERT INTO customers VALUES (1, 'ada@example.com', 10.50),
                             (2, 'bob@example.com', 20.00),
                             (3, 'cyd@example.com', 30.25);
