"""Version 3: form submissions keep the widget session that made them (client results must come
from it) and the size of their files (the per-agent file quota), counted for the
submissions already stored from their formData descriptors.
"""

SQLITE = """
    ALTER TABLE form_submissions ADD COLUMN session_id TEXT;
    ALTER TABLE form_submissions ADD COLUMN files_bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE form_submissions SET files_bytes = (
        SELECT COALESCE(SUM(json_extract(d.value, '$.size')), 0)
        FROM json_each(form_submissions.files) AS f
        JOIN json_each(form_submissions.form_data) AS d ON d.key = f.key
    ) WHERE files IS NOT NULL;
    CREATE INDEX form_submissions_agent_files ON form_submissions(agent_id, files_bytes)
        WHERE files_bytes > 0;
    """

POSTGRES = None  # older than PostgreSQL's first schema (version 6)
