@echo off
rem UCI launcher for lc0-rocm on Windows: point your chess GUI at this file.
rem Runs "python -m lc0_rocm" with every argument passed on, e.g.
rem   lc0-rocm.bat --weights=C:\nets\maia-1900.pb.gz --backend=cpu
rem Settings (environment variables, optional):
rem   LC0ROCM_PYTHON  the Python that has lc0-rocm installed (default: the
rem                   checkout's .venv, else the active virtual environment's, else python)
rem   LC0ROCM_ARGS    extra arguments, e.g. --backend=cpu --threads=2
rem   (LC0_ROCM_PYTHON and LC0_ROCM_ARGS, their former names, still work)
setlocal
if "%LC0ROCM_PYTHON%"=="" set LC0ROCM_PYTHON=%LC0_ROCM_PYTHON%
if "%LC0ROCM_PYTHON%"=="" if exist "%~dp0..\.venv\Scripts\python.exe" set LC0ROCM_PYTHON=%~dp0..\.venv\Scripts\python.exe
if "%LC0ROCM_PYTHON%"=="" if defined VIRTUAL_ENV if exist "%VIRTUAL_ENV%\Scripts\python.exe" set LC0ROCM_PYTHON=%VIRTUAL_ENV%\Scripts\python.exe
if "%LC0ROCM_PYTHON%"=="" set LC0ROCM_PYTHON=python
if "%LC0ROCM_ARGS%"=="" set LC0ROCM_ARGS=%LC0_ROCM_ARGS%
rem A source checkout works without installing: put it on the path.
if exist "%~dp0..\lc0_rocm\__init__.py" set PYTHONPATH=%~dp0..;%PYTHONPATH%
"%LC0ROCM_PYTHON%" -u -m lc0_rocm %LC0ROCM_ARGS% %*
