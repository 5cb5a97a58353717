"""Where comparison happens: a baseline run and a candidate run read into one Comparison (observations diffed,
attempts compared, acknowledgements applied); each path's category is asked of gymgate.verdict."""
