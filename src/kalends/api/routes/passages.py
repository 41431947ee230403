"""Placeholder: this area's routes are being written."""

from fastapi import APIRouter

router = APIRouter()
