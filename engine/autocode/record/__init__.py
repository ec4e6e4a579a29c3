"""The learned project record `.autocode/project.json`: schema, load, merge, forget, `.gitignore`.

A completed task merges what it observed and what a person answered; a fresh
task loads it as the lowest explicit layer of its settings. Importing this
package imports pydantic: the CLI imports it only inside a command's `run`.
"""

from autocode.record.forget import ForgetResult, forget_record
from autocode.record.gitignore import GitignoreState, ensure_gitignore, gitignore_state
from autocode.record.load import STATUSES, RecordLoad, load_record
from autocode.record.location import RECORD_RELPATH, workspace_root
from autocode.record.merge import MergeResult, ObservedFacts, last_merge_omitted, merge_record
from autocode.record.schema import Convention, ProjectRecord, Route, record_json_schema

__all__ = [
    "RECORD_RELPATH",
    "STATUSES",
    "Convention",
    "ForgetResult",
    "GitignoreState",
    "MergeResult",
    "ObservedFacts",
    "ProjectRecord",
    "RecordLoad",
    "Route",
    "ensure_gitignore",
    "forget_record",
    "gitignore_state",
    "last_merge_omitted",
    "load_record",
    "merge_record",
    "record_json_schema",
    "workspace_root",
]
