# Sourced by served_both_gpus.sh and served_config_tree.sh (with cli and root set): splits the
# H100's and the H200's served rows as served_split.sh does (the same families and shapes on the
# same side), their split counts in $root/{h100,h200}/split.txt; sets h100_split and h200_split
# (the temporary folders) and leaves served_split.sh's score function defined.
splits=()
gpu=H100-SXM out=$root/h100
source data/models/served_split.sh
h100_split=$split
gpu=H200-SXM out=$root/h200
source data/models/served_split.sh
h200_split=$split
