-- Copies every topic, document, task, annotator and judgment of a bench_scale database four
-- times with new ids and names (x5 in all): a 10 M-judgment collection for the fit job's stages
-- without a 40-minute upload. psql -d DB -f bench/scale_replicate.sql (docs/benchmarks.md)
\set ON_ERROR_STOP on
SELECT max(id) AS t FROM topics \gset
SELECT max(id) AS d FROM documents \gset
SELECT max(id) AS k FROM tasks \gset
SELECT max(id) AS a FROM annotators \gset
SELECT max(id) AS j FROM judgments \gset
\timing on
INSERT INTO topics (id, collection_id, external_id) SELECT id + c*:t, collection_id, external_id || '.' || c FROM topics, generate_series(1,4) c WHERE id <= :t;
INSERT INTO documents (id, collection_id, external_id) SELECT id + c*:d, collection_id, external_id || '.' || c FROM documents, generate_series(1,4) c WHERE id <= :d;
INSERT INTO tasks (id, collection_id, topic_id, document_id, gold) SELECT id + c*:k, collection_id, topic_id + c*:t, document_id + c*:d, gold FROM tasks, generate_series(1,4) c WHERE id <= :k;
INSERT INTO annotators (id, collection_id, external_id, kind) SELECT id + c*:a, collection_id, external_id || '.' || c, kind FROM annotators, generate_series(1,4) c WHERE id <= :a;
INSERT INTO judgments (id, collection_id, task_id, annotator_id, label, batch_id, received_at) SELECT id + c*:j, collection_id, task_id + c*:k, annotator_id + c*:a, label, batch_id, received_at FROM judgments, generate_series(1,4) c WHERE id <= :j;
SELECT setval('topics_id_seq', (SELECT max(id) FROM topics));
SELECT setval('documents_id_seq', (SELECT max(id) FROM documents));
SELECT setval('tasks_id_seq', (SELECT max(id) FROM tasks));
SELECT setval('annotators_id_seq', (SELECT max(id) FROM annotators));
SELECT setval('judgments_id_seq', (SELECT max(id) FROM judgments));
ANALYZE;
SELECT count(*) FROM judgments;
