-- mcpflow's database (Temporal's auto-setup creates its own two).
CREATE USER mcpflow WITH PASSWORD 'mcpflow';
CREATE DATABASE mcpflow OWNER mcpflow;
