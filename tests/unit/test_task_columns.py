"""The task model reads rows by column position: its column list must match the table."""

from kalends.storage.task_tables import tasks
from kalends.tasks.models import TASK_COLUMNS


def test_the_task_model_names_the_tasks_columns_in_table_order() -> None:
    assert tuple(tasks.c.keys()) == TASK_COLUMNS
