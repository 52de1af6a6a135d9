"""Running the workflow elsewhere: Slurm resource checks and failure diagnosis, isolated work
directories, ablation families run side by side."""
